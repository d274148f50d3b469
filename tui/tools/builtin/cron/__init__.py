"""The cron tools: ``cron_add``, ``cron_list``, ``cron_remove`` (``tools``), the schedules they
take (``schedule``) and the jobs' table (``store``), kept in the memory's database."""
