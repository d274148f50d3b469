"""The web tools without a browser: ``fetch_url``, ``http_request`` (``tools``) and
``web_search`` (``web_search``), each request sent by ``request`` through the network guard."""
