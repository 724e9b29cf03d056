"""Building the embedded default data (run at build time, not by users)."""
