"""Tools on top of the package: the ``attnlab`` command, the doctor, the model
kit and the multi-process mean."""
