"""The test double's notebook runner, executed by the Python the double chose for the kernel
(as Quarto runs src/resources/jupyter/jupyter.py with it): executes the notebook in place, in
the working folder it was started in, skipping cells marked ``eval: false``. Needs nbclient
and ipykernel in that Python, as Quarto does."""

import sys

import nbformat
from nbclient import NotebookClient


def main(path: str) -> None:
    notebook = nbformat.read(path, as_version=4)
    skipped = {
        i: cell
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and not cell.metadata.get("double", {}).get("eval", True)
    }
    runnable = nbformat.v4.new_notebook(
        cells=[c for i, c in enumerate(notebook.cells) if i not in skipped], metadata=notebook.metadata
    )
    # resources path ".": the kernel starts in this process's folder, the page's
    NotebookClient(runnable, timeout=600, kernel_name="python3", resources={"metadata": {"path": "."}}).execute()
    executed = iter(runnable.cells)
    notebook.cells = [skipped[i] if i in skipped else next(executed) for i in range(len(notebook.cells))]
    nbformat.write(notebook, path)


if __name__ == "__main__":
    main(sys.argv[1])
