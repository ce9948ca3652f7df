"""The TUI's widgets: a table that repaints only changed cells, the filter bar, bars and panels."""
