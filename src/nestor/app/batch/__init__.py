"""``nestor batch``: many agent jobs at once, each in a checkout of its own, on this machine or on Ray.

- :mod:`~nestor.app.batch.jobs`: the jobs file, read and checked whole before anything starts.
- :mod:`~nestor.app.batch.results`: the results file, appended one whole line per job, and resume.
- :mod:`~nestor.app.batch.checkout`: a job's repository packed once, and each job's own clone.
- :mod:`~nestor.app.batch.job`: one job, run to its result (the agent tree of ``nestor run``).
- :mod:`~nestor.app.batch.runner`: the jobs on local workers, the batch's budget, stopping.
- :mod:`~nestor.app.batch.ray_backend`: the jobs as Ray tasks (the only module importing ``ray``).
- :mod:`~nestor.app.batch.report`: the summary of a results file, and SWE-bench's predictions.
"""
