//go:build race

package feishu

const raceDetector = true
