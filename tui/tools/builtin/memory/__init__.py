"""The memory tools: ``memory_store``, ``memory_recall``, ``memory_forget`` (``tools``), over
one SQLite file several processes share (``sqlite_db``); cron keeps its jobs in it too."""
