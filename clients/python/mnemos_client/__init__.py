"""Python client for the mnemos memory server (``mnemos serve``)::

    from mnemos_client import Client, Turn

    with Client("http://127.0.0.1:8080") as mnemos:
        mnemos.add_turns("lena", Turn("user", "My sister Mia is allergic to peanuts."))
        print(mnemos.recall("lena", "What should I cook for Mia?").text)

:class:`AsyncClient` has the same methods for asyncio. Failures raise subclasses of
:class:`MnemosError`.
"""

from ._version import __version__
from .async_client import AsyncClient
from .client import Client
from .errors import (
    BadRequest,
    Conflict,
    ConnectionError,
    Forbidden,
    InvalidInput,
    MethodNotAllowed,
    MnemosError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Timeout,
    Unauthorized,
    Unavailable,
    UnexpectedResponse,
)
from .models import (
    AddedTurn,
    AddResult,
    ApiKey,
    CreatedKey,
    ForgetResult,
    Forgotten,
    Health,
    HistoryEntry,
    Job,
    JobError,
    JobReport,
    Memory,
    MemoryPage,
    Moment,
    Preset,
    PresetParam,
    PurgeResult,
    RecallItem,
    RecallResult,
    SearchHit,
    SearchResult,
    Stats,
    Turn,
    View,
)

__all__ = [
    "__version__",
    "Client",
    "AsyncClient",
    "Turn",
    # results
    "AddedTurn",
    "AddResult",
    "ApiKey",
    "CreatedKey",
    "ForgetResult",
    "Forgotten",
    "Health",
    "HistoryEntry",
    "Job",
    "JobError",
    "JobReport",
    "Memory",
    "MemoryPage",
    "Moment",
    "Preset",
    "PresetParam",
    "PurgeResult",
    "RecallItem",
    "RecallResult",
    "SearchHit",
    "SearchResult",
    "Stats",
    "View",
    # errors
    "MnemosError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "PayloadTooLarge",
    "InvalidInput",
    "RateLimited",
    "Unavailable",
    "Timeout",
    "ServerError",
    "ConnectionError",
    "UnexpectedResponse",
]
