package flight

import "errors"

// ErrPanicked is returned to the waiters of a call whose fn panicked.
var ErrPanicked = errors.New("flight: call panicked")
