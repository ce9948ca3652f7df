"""Node-pool campaigns: drain the nodes a selector picks in waves, within a budget, a rate and windows."""
