"""Pure reducers: ``fold(view, envelope) -> view`` builds a job's current state from its events.

The text printers, ``jobs show`` and the TUI read these views; nothing re-parses text.
"""
