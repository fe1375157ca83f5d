"""One router per face: each module holds its routes at module level, with its dependencies."""
