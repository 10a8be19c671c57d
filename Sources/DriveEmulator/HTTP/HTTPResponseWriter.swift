import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Serializes response heads, and small whole responses.
enum HTTPResponseWriter {
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Resume Incomplete"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Payload Too Large"
        case 416: return "Requested Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }

    /// Statuses that never carry a body (and so no framing headers).
    static func forbidsBody(_ status: Int) -> Bool {
        (100..<200).contains(status) || status == 204 || status == 304
    }

    /// The status line and header block, with the blank line.
    static func head(status: Int, headers: HTTPHeaders) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for field in headers {
            // A handler's value must not smuggle a line break into the head.
            let value = field.value.filter { $0 != "\r" && $0 != "\n" }
            text += "\(field.name): \(value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A whole response with an in-memory body (errors the server makes itself).
    static func serialize(_ response: HTTPResponse, closing: Bool) -> [UInt8] {
        var headers = response.headers
        let body: [UInt8]
        if case .bytes(let b) = response.body { body = b } else { body = [] }
        headers.set("Content-Length", String(body.count))
        headers.set("Date", httpDate())
        if closing { headers.set("Connection", "close") }
        return head(status: response.status, headers: headers) + body
    }

    /// IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ seconds: Int = Int(time(nil))) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(days[Int(parts.tm_wday) % 7]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon) % 12]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
