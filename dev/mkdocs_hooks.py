"""MkDocs hooks of the harnpy docs site (``hooks:`` in ``mkdocs.yml``).

``on_files`` adds the generated reference pages (:func:`harnpy.docgen.reference_pages`:
every registered builtin, every method, every public ``std/`` function) to the site, so
the reference is built from the registry of the harnpy being documented and is never
stale. Nothing is written into ``docs/``.
"""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages (replacing a file of the same path, if any)."""
    from harnpy.docgen import reference_pages

    for path, content in reference_pages().items():
        old = files.get_file_from_path(path)
        if old is not None:
            files.remove(old)
        files.append(File.generated(config, path, content=content))
    return files
