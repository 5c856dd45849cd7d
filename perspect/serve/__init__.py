"""`perspect serve`: the HTTP JSON API (FastAPI on uvicorn) over one index.

config.py   ServeConfig: where, how many workers, the limits of a request
engines.py  the engines of one worker, loaded in the background at start-up
errors.py   one-line JSON errors: the body-size guard and the exception handlers
schemas.py  the request models with the limits they enforce, and each route's statuses, as the
            OpenAPI description states them
app.py      the routes (POST /search, /compare, /indexes/{name}/news; GET /indexes, /health,
            /ready) and `run`, which starts uvicorn
"""
