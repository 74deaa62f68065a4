"""symgraph (exports are added once every stage has landed)."""
