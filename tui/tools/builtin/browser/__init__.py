"""``browser``: the tool and its list (``tools``), what a call may ask (``params``), the one
running browser of a session (``running``), starting it (``launch``), the guard every request
passes (``guard``) and what each action does to the page (``actions``).

Only ``tools`` and ``params`` load with the catalog; the rest, and Playwright, on first use.
"""
