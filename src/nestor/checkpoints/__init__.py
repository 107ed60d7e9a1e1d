"""Checkpoints: snapshots of the project an agent tree changes, and undoing its changes.

- :mod:`~nestor.checkpoints.recorder`: a session tree's snapshots (before each prompt's first
  change, after each tool call that can change files) and who made each change;
- :mod:`~nestor.checkpoints.undo`: what an undo of a prompt or of an agent writes, and writing it;
- :mod:`~nestor.checkpoints.restore`: the files written back, checked first, all or none;
- :mod:`~nestor.checkpoints.retention`: pruning snapshots with their sessions and by age.

Snapshots live in the project's shadow repository (:mod:`nestor.tools.git.shadow`), their records
in the session database (:mod:`nestor.store.checkpoints`).
"""
