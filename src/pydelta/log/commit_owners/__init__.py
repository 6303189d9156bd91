"""Commit owners for managed-commit tables (seed 001): the client API, a registry, two backends."""

from pydelta.log.commit_owners.base import (
    COMMIT_OWNER_CONF_KEY,
    COMMIT_OWNER_KEY,
    FEATURE,
    Commit,
    CommitOwnerClient,
    GetCommitsResponse,
)
from pydelta.log.commit_owners.registry import commit_owner, owner_of, register_commit_owner

__all__ = [
    "COMMIT_OWNER_CONF_KEY",
    "COMMIT_OWNER_KEY",
    "FEATURE",
    "Commit",
    "CommitOwnerClient",
    "GetCommitsResponse",
    "commit_owner",
    "owner_of",
    "register_commit_owner",
]
