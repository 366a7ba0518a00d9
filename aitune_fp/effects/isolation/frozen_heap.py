"""The last import of the workers' fork server: its heap collected once, then frozen.

Rules:
- imported by the fork server only, after everything else it preloads
  (:func:`~aitune_fp.effects.isolation.server.wanted` lists it last), never by the tune
  process;
- ``gc.collect()`` then ``gc.freeze()``: the objects torch and the compilers left in the
  server move to the permanent generation, so a worker forked from it starts with them
  there. A worker's own collection (the memory watch collects before each reading) then
  walks only what the worker made, not the ~170k objects it inherited (about 0.27 s per
  backend on this 2-core machine), and the collector does not write to those inherited
  pages, so fork's copy-on-write keeps them shared with the server;
- nothing collectable is frozen (the collection runs first), and a worker still collects
  its own garbage as usual.
"""

from __future__ import annotations

import gc

gc.collect()
gc.freeze()
