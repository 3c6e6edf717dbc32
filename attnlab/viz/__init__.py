"""Pictures: matplotlib plots, CJK fonts, the offline HTML views and widgets."""
