"""The one write path: the apply session every door runs (`session`: check, confirmation,
re-check, write) with what it writes (`intents`: apply a plan, undo, resume), what it reads
before writing (`check`, `resume_check`), the writers (`writer`, `offset_writer`,
`client_push`, `client_file_writer`) behind `write_access`, how far they came (`progress`), undo
from a journal (`journal_actions`), the console's door (`write_sessions`), the preview's flow
from form to apply (`preview_flow`), and the workspace's history of what was planned and
applied (`history`)."""
