"""A stand-in for freezegun's ``freeze_time``, enough for test_timed.py (added for nestor's evals)."""

import time
from contextlib import contextmanager
from datetime import datetime
from datetime import timedelta
from datetime import timezone


class FrozenClock:
    def __init__(self, now):
        self.now = now

    def tick(self, delta=timedelta(seconds=1)):
        self.now += delta


@contextmanager
def freeze_time(when):
    if isinstance(when, str):
        when = datetime.fromisoformat(when)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    clock = FrozenClock(when)
    real_time = time.time
    time.time = lambda: clock.now.timestamp()
    try:
        yield clock
    finally:
        time.time = real_time
