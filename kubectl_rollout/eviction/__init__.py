"""Evicting one pod through the Eviction API: what each refusal means, how long to wait, the PDB watch
that ends a wait early, and the order pods go in."""
