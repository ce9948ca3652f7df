"""Jobs: what to run (a spec that serialises to JSON), the typed events every engine emits, the views
folded from them, and the one runner that runs any spec."""
