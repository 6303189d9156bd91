"""Variant shredding (PROTOCOL.md "Variant Shredding"): which tables may hold shredded variants,
and which may write new ones. Spark does the shredding itself; this says when it may."""

from __future__ import annotations

from pydelta.protocol import properties as P
from pydelta.protocol.actions import Metadata, Protocol

PROPERTY = "delta.enableVariantShredding"
#: The stable name and delta-spark's preview name (which delta-spark 4.4 attaches by default).
FEATURES = frozenset({"variantShredding", "variantShredding-preview"})


def supported(protocol: Protocol) -> frozenset[str]:
    """The shredding features the table supports: its files may hold shredded variants."""
    return FEATURES & protocol.effective_reader_features


def enabled(metadata: Metadata) -> bool:
    """Whether the table property asks for shredding."""
    return P.flag(metadata.configuration, PROPERTY)


def shreds_variants(metadata: Metadata, protocol: Protocol | None) -> bool:
    """Whether new data files may hold shredded variants: only when the property is true and the
    protocol supports the feature; a table that only supports it gets unshredded variants."""
    return protocol is not None and enabled(metadata) and bool(FEATURES & protocol.effective_writer_features)
