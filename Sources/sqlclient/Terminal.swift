#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The terminal, when there is one: prompts ("1> ", "Password: ") and reading a password
/// without echoing it.
enum Terminal {
    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// `text` on standard output at once (prompts are not results: never buffered).
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { posixWrite(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads one line from standard input (a terminal) with echo turned off, after writing
    /// `prompt` on standard error; the terminal's settings are restored afterwards, also when
    /// the user interrupts with Ctrl-C. Nil at end of input.
    static func readHiddenLine(prompt: String) -> String? {
        var saved = termios()
        let haveSettings = tcgetattr(STDIN_FILENO, &saved) == 0
        if haveSettings {
            savedSettings = saved
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            signal(SIGINT, restoreAndExit)
            signal(SIGTERM, restoreAndExit)
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        // The prompt after echo is off: what is typed once it shows is never echoed.
        FileHandle.standardError.write(Data(prompt.utf8))
        let line = readLine(strippingNewline: true)
        if haveSettings {
            _ = tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
            savedSettings = nil
        }
        return line.map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 }
    }
}

/// The terminal settings to put back if the password prompt is interrupted.
nonisolated(unsafe) private var savedSettings: termios?

private func restoreAndExit(_ signal: Int32) {
    if var settings = savedSettings { _ = tcsetattr(STDIN_FILENO, TCSANOW, &settings) }
    _exit(128 + signal)
}
