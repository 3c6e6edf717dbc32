from attnlab.tools.cli import main

raise SystemExit(main())
