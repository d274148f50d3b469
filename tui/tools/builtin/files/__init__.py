"""The file tools: ``read_file``, ``write_file``, ``edit_file``, ``list_files``.

``tools`` holds the tools; ``access`` is what every file tool (and the search and notebook
tools) does on the target through the backend; ``reads``, ``edits`` and ``listing`` shape a
read, an edit and a folder's listing.
"""
