package loop

import (
	"fmt"

	"github.com/toolhost/toolhost/catalog"
)

// CodeMaxUses is the code of a hosted call over its tool's MaxUses: it
// does not run, and the model reads that the tool is used up (a Messages
// server tool's max_uses, answered with the API's max_uses_exceeded).
const CodeMaxUses = "max_uses_exceeded"

// overUses fails, without running them, the calls of a tool beyond its
// Hosted.MaxUses for the whole run, counting those already made; used
// holds the run's counts by tool and is updated.
func overUses(limits map[string]int, used map[string]int, calls []Call, lang catalog.Lang) {
	if len(limits) == 0 {
		return
	}
	for i := range calls {
		c := &calls[i]
		limit, ok := limits[c.Name]
		if !ok {
			continue
		}
		if used[c.Name] < limit {
			used[c.Name]++
			continue
		}
		c.Status, c.IsError, c.Code = StatusFailed, true, CodeMaxUses
		msg := fmt.Sprintf("the request allows %s at most %d time(s); answer with what you have", c.Name, limit)
		c.Summary = c.Name + " failed: " + CodeMaxUses
		if lang != catalog.English {
			msg = fmt.Sprintf("本次请求最多调用 %s %d 次；请根据已有资料作答", c.Name, limit)
			c.Summary = c.Name + " 失败：" + CodeMaxUses
		}
		c.Result = CodeMaxUses + ": " + msg
	}
}
