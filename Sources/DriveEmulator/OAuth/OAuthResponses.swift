import DriveSupport
import Foundation

/// Google's token-endpoint answers: JSON with lowercase `charset=utf-8`, `no-store` on success,
/// `private` on errors, `{"error":…,"error_description":…}` (drive-behaviours §2.9).
enum OAuthResponses {
    static func tokenSuccess(_ object: [String: Any]) -> HTTPResponse {
        json(200, object, cacheControl: "no-cache, no-store, max-age=0, must-revalidate", extra: [
            ("Pragma", "no-cache"), ("Expires", "Mon, 01 Jan 1990 00:00:00 GMT"),
        ])
    }

    static func tokenError(_ status: Int, _ error: String, _ description: String) -> HTTPResponse {
        json(status, ["error": error, "error_description": description], cacheControl: "private")
    }

    static func json(_ status: Int, _ object: Any, cacheControl: String, extra: [(String, String)] = []) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        var headers = HTTPHeaders([
            ("Content-Type", "application/json; charset=utf-8"), ("Vary", "Origin"), ("Vary", "X-Origin"), ("Vary", "Referer"),
            ("Server", "ESF"), ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "SAMEORIGIN"), ("X-XSS-Protection", "0"),
        ] + extra)
        headers.set("Cache-Control", cacheControl)
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(data)))
    }

    /// The consent screen's error page: never a redirect, since the redirect itself may be what is wrong.
    /// The text carries "Error <status>: <error>" and the description, as Google's page does.
    static func consentErrorPage(_ status: Int, _ error: String, _ description: String) -> HTTPResponse {
        let html = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>Error \(status) (OAuth2 Error)</title></head>
        <body><h1>Access blocked: Authorization Error</h1>
        <p><b>Error \(status): \(escapeHTML(error))</b></p>
        <p>\(escapeHTML(description))</p>
        </body></html>

        """
        var headers = HTTPHeaders([("Content-Type", "text/html; charset=utf-8"), ("Server", "ESF"), ("X-Frame-Options", "SAMEORIGIN")])
        headers.set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(html.utf8)))
    }

    static func escapeHTML(_ s: String) -> String { MarkupText.escape(s) }

    /// `application/x-www-form-urlencoded` encoding of one value (RFC 3986 unreserved kept).
    static func formEncode(_ s: String) -> String { FormEncoding.encodeComponent(s) }
}
