"""The report site: page context, tables, charts, molecule drawings and the renderer (reports/*.qmd)."""
