"""The modal screens, each over the screen it was opened from: a yes/no confirmation, the help, a node's drain
plan, the revision an undo returns to, and the form of `set image`."""
