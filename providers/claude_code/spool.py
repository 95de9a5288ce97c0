"""Reading the hook spool lab's hook command writes (compat §8). No Django.

The reading is every adapter's (providers/hookspool.py); this adapter's modules import it here.
"""

from __future__ import annotations

from providers.hookspool import SpoolSignature, spool_events, spool_signature

__all__ = ["SpoolSignature", "spool_events", "spool_signature"]
