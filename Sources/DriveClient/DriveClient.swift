// The Drive v3 client: libcurl transport, OAuth 2.0 tokens, pacing and retries (issue 3).
import DriveSupport
