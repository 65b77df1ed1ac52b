"""web_search: a provider interface (SearxNG's JSON API first), off unless explicitly opted in."""
