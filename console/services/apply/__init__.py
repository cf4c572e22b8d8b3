"""The one write path: the apply session every door runs (`session`: check, confirmation,
re-check, write), what it reads before writing (`check`, `resume_check`), the writers
(`writer`, `offset_writer`, `client_push`, `client_file_writer`) behind `write_access`, undo
(`journal_actions`), the console's door (`write_sessions`), the preview's flow from form to
apply (`preview_flow`), and the workspace's history of what was planned and applied."""
