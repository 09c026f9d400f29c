"""Write operations (`<entity>_<action>`), keyword-only and typed."""
