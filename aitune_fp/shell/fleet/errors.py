"""The one error a fleet run reports to the user."""

from __future__ import annotations


class FleetError(Exception):
    """A plan that cannot run (the message is one line for the user)."""
