"""`tt serve`: the translator over HTTP, LibreTranslate-compatible, with tt's own /v1 API beside it.

    command   the Typer command: options checked, then server.run
    settings  every limit and knob in one frozen record
    server    a socket, uvicorn, the app; in the foreground or (tests, benchmarks) in a thread
    protocol  uvicorn's HTTP/1.1 protocol with a read timeout for request heads, JSON errors, a drain that
              refuses uploads
    app       the Starlette app: routes, middleware, errors as JSON, /health
    libre     LibreTranslate's API: /translate (source auto), /detect, /translate_file, /languages,
              /frontend/settings; text, HTML and files through the text pipeline
    files     translated files kept until downloaded
    v1        POST /v1/translate (the `tt translate --json` record, or --raw's), GET /v1/model (the model card)
    text      the text pipeline (core/text) in a thread of the server, waiting there for its batcher jobs
    service   what the endpoints share: the checks (key, size), the lanes and which one a request goes to,
              /languages, /health
    lanes     one per direction served: its model, its batcher, the text pipeline's helpers of that model
    body      a request's fields (query string, JSON, form, multipart), read with a deadline; ApiError
    presence  whether a request's client is still there (a hang-up stops its decoding)
    batcher   one worker thread decodes concurrent requests together (the model runs one call at a time)
    keys      API keys
    logs      JSON lines on stderr: the access log and server events
    client    a standard-library client (tests, bench/bench_serve.py, tt_cli.remote, programs)
    announce  the per-user file that tells `tt translate` a server is running, and for which model

Only `command` is imported by `tt` itself; `client` and `announce` need nothing but the standard
library (warm `tt translate` calls use them without torch); the rest imports Starlette and uvicorn
(the `serve` extra).
"""
