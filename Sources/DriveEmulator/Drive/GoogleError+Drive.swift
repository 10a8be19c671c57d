import Foundation

/// Drive's errors with Google's wording (drive-behaviours.md §2).
extension GoogleError {
    static let authHelp = "Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

    /// No `Authorization` header (ESF form, with the CREDENTIALS_MISSING detail).
    static func loginRequired(rpcMethod: String) -> GoogleError {
        var e = GoogleError(401, reason: "required", message: "Request is missing required authentication credential. \(authHelp)",
                            location: "Authorization", locationType: "header", status: "UNAUTHENTICATED", itemMessage: "Login Required.")
        e.details = [GoogleErrorInfo(reason: "CREDENTIALS_MISSING",
                                     metadata: ["method": rpcMethod, "service": "drive.googleapis.com"])]
        e.extraHeaders = [("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"")]
        return e
    }

    /// Unknown, expired or revoked access token.
    static var invalidCredentials: GoogleError {
        var e = GoogleError(401, reason: "authError", message: "Request had invalid authentication credentials. \(authHelp)",
                            location: "Authorization", locationType: "header", status: "UNAUTHENTICATED",
                            itemMessage: "Invalid Credentials")
        e.extraHeaders = [("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"")]
        return e
    }

    static var insufficientScopes: GoogleError {
        GoogleError(403, reason: "insufficientPermissions", message: "Request had insufficient authentication scopes.",
                    status: "PERMISSION_DENIED", itemMessage: "Insufficient Permission")
    }

    static func invalidValue(location: String) -> GoogleError {
        GoogleError(400, reason: "invalid", message: "Invalid Value", location: location, locationType: "parameter")
    }

    static func required(_ parameter: String, message: String? = nil) -> GoogleError {
        GoogleError(400, reason: "required", message: message ?? "Required parameter: \(parameter)", location: parameter,
                    locationType: "parameter")
    }

    static var fieldNotWritable: GoogleError {
        GoogleError(403, reason: "fieldNotWritable", message: "The resource body includes fields which are not directly writable.")
    }

    static var parentsNotWritable: GoogleError {
        GoogleError(403, reason: "fieldNotWritable",
                    message: "The parents field is not directly writable in update requests. Use the addParents and removeParents parameters instead.")
    }

    static func insufficientFilePermissions(_ fileId: String) -> GoogleError {
        GoogleError(403, reason: "insufficientFilePermissions",
                    message: "The user does not have sufficient permissions for file \(fileId).")
    }

    static var fileNotDownloadable: GoogleError {
        GoogleError(403, reason: "fileNotDownloadable",
                    message: "Only files with binary content can be downloaded. Use Export with Docs Editors files.",
                    location: "alt", locationType: "parameter")
    }

    static var fileIdInUse: GoogleError {
        GoogleError(409, reason: "fileIdInUse", message: "A file already exists with the provided ID.")
    }

    static var cannotAddParent: GoogleError {
        GoogleError(403, reason: "cannotAddParent", message: "Increasing the number of parents is not allowed.")
    }

    static func rangeNotSatisfiable(size: Int64) -> GoogleError {
        var e = GoogleError(416, reason: "requestedRangeNotSatisfiable", message: "Request range not satisfiable")
        e.extraHeaders = [("Content-Range", "bytes */\(size)")]
        return e
    }
}
