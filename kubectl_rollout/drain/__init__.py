"""Draining nodes: kubectl's pod filters, cordoning, node batches and Events on the node; ``surge/``: --surge."""
