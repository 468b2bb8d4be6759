package feishu

import "time"

// RestartDelay exposes the restart backoff to the tests.
func (l *LongConn) RestartDelay(failed int) time.Duration { return l.restartDelay(failed) }
