"""pyiceberg's FileIO over pydelta's Storage: the Iceberg metadata is read and written through
the same storage (and settings) as the table's log, whatever the scheme."""

from __future__ import annotations

import io
from typing import Any

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream

from pydelta.log.storage import Storage


class _BufferedOutput(io.BytesIO):
    """Collects what pyiceberg writes; stored in one put when closed."""

    def __init__(self, storage: Storage, path: str, overwrite: bool) -> None:
        super().__init__()
        self._storage, self._path, self._overwrite = storage, path, overwrite

    def close(self) -> None:
        if not self.closed:
            data = self.getvalue()
            if self._overwrite:
                self._storage.put(self._path, data)
            else:
                self._storage.put_if_absent(self._path, data)
        super().close()


class _StorageFile:
    """What reading and writing a file share: its size and existence in the storage."""

    location: str
    _storage: Storage

    def __len__(self) -> int:
        return len(self._storage.read(self.location))

    def exists(self) -> bool:
        return self._storage.exists(self.location)


class StorageInputFile(_StorageFile, InputFile):
    def __init__(self, storage: Storage, location: str) -> None:
        InputFile.__init__(self, location)
        self._storage = storage

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._storage.read(self.location))


class StorageOutputFile(_StorageFile, OutputFile):
    def __init__(self, storage: Storage, location: str) -> None:
        OutputFile.__init__(self, location)
        self._storage = storage

    def to_input_file(self) -> InputFile:
        return StorageInputFile(self._storage, self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        return _BufferedOutput(self._storage, self.location, overwrite)


class StorageFileIO(FileIO):
    """A FileIO whose files are `storage`'s."""

    def __init__(self, storage: Storage, properties: dict[str, Any] | None = None) -> None:
        super().__init__(properties or {})
        self.storage = storage

    def new_input(self, location: str) -> InputFile:
        return StorageInputFile(self.storage, location)

    def new_output(self, location: str) -> OutputFile:
        return StorageOutputFile(self.storage, location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        self.storage.delete(location if isinstance(location, str) else location.location)
