"""Detection's stages, each small and tested on its own (issue #28: a detector built to
generalise). ``colour``: the table's light, from the table markers' white paper, so that
configured colours (rims, tokens) are compared with what this camera sees."""
