"""The memory tools: ``memory_store``, ``memory_recall``, ``memory_forget`` (``tools``), over the
notes' store (``store``), one SQLite file several processes share (``sqlite_db``); cron keeps
its jobs in the same file."""
