"""Exactly one watcher per run across lab's workers.

With PostgreSQL, a session-level advisory lock per run, held on a connection of its own: when
the holding worker dies, PostgreSQL drops its connection and the lock with it, and another
worker's next try takes over. With SQLite there is one process by design, so the lease is
always granted.
"""

from __future__ import annotations

import logging

from django.conf import settings

log = logging.getLogger(__name__)

LOCK_NAMESPACE = 0x1AB  # the first key of pg_try_advisory_lock(int, int): lab's run watchers


class WatchLease:
    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self._conn: object | None = None

    @staticmethod
    def shared() -> bool:
        return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"

    def try_acquire(self) -> bool:
        if not self.shared():
            return True
        if self._conn is not None:
            return True
        import psycopg

        db = settings.DATABASES["default"]
        try:
            conn = psycopg.connect(
                dbname=db["NAME"],
                user=db.get("USER") or None,
                password=db.get("PASSWORD") or None,
                host=db.get("HOST") or None,
                port=db.get("PORT") or None,
                autocommit=True,
                application_name=f"lab-watch-{self.run_id}",
            )
            row = conn.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (LOCK_NAMESPACE, self.run_id)
            ).fetchone()
        except psycopg.Error:
            log.warning("could not reach PostgreSQL for the watch lease of run %s", self.run_id)
            return False
        if row and row[0]:
            self._conn = conn
            return True
        conn.close()
        return False

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # type: ignore[attr-defined]  # closing the session releases the lock
