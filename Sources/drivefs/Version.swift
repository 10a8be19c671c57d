enum DriveFSVersion {
    /// Bumped by hand at each release.
    static let current = "0.1.0"
}
