"""Logs read from a cloud store (fsspec URLs: s3://, gs://, az://) without credentials:
one line saying which are missing and how to give them, not the client's internal error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from labcoat._errors import LabcoatError

# the clients' "no credentials" errors, by class name: their packages are optional
_MISSING = {
    "NoCredentialsError": "s3",
    "PartialCredentialsError": "s3",
    "DefaultCredentialsError": "gs",
    "ClientAuthenticationError": "az",
}

HOW = {
    "s3": "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
    "(or AWS_PROFILE for a profile in ~/.aws), or run `aws configure`",
    "gs": "no Google Cloud credentials found: set GOOGLE_APPLICATION_CREDENTIALS to a "
    "service account's key file, or run `gcloud auth application-default login`",
    "az": "Azure refused the credentials: set AZURE_STORAGE_CONNECTION_STRING, or "
    "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY",
}


@contextlib.contextmanager
def credentials_named(sources: Iterable[str]) -> Iterator[None]:
    """Turn a cloud client's missing-credentials error into one LabcoatError line naming
    the URL it was reading and how to give the credentials."""
    try:
        yield
    except Exception as ex:
        store = next(
            (_MISSING[c.__name__] for c in type(ex).__mro__ if c.__name__ in _MISSING), None
        )
        if store is None:
            raise
        urls = [s for s in map(str, sources) if s.startswith(_PREFIXES[store])]
        where = ", ".join(urls) or "the logs"
        raise LabcoatError(f"{where}: {HOW[store]}") from None


_PREFIXES = {
    "s3": ("s3://", "s3a://"),
    "gs": ("gs://", "gcs://"),
    "az": ("az://", "abfs://", "abfss://"),
}
