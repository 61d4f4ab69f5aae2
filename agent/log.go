package agent

import "log/slog"

const slogInfo = slog.LevelInfo
