"""Write operations (`<entity>_<action>`), keyword-only and typed: the audit of searches (search_events),
judges, citation checks (citations), golden questions and their evaluations (golden), measures (measure)."""
