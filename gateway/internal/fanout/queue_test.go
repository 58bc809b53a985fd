package fanout

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSendQueue(t *testing.T) {
	frame := func(n int) Item { return Item{Bytes: make([]byte, n)} }
	t.Run("bounded, then dead", func(t *testing.T) {
		q := NewQueue(100, KindWS)
		for _, n := range []int{60, 40} {
			if over, err := q.push(frame(n)); over || err != nil {
				t.Fatalf("push %d: %v %v", n, over, err)
			}
		}
		if over, err := q.push(frame(1)); !over || !errors.Is(err, ErrSlow) {
			t.Fatalf("push past the bound: overflowed %v, err %v", over, err)
		}
		select {
		case <-q.Overflow():
		default:
			t.Fatal("overflow not signalled")
		}
		if _, ok := q.Head(); ok {
			t.Fatal("frames kept after the overflow")
		}
		if over, err := q.push(frame(1)); over || !errors.Is(err, ErrSlow) {
			t.Fatalf("push after the overflow: %v %v", over, err)
		}
		if err := q.pushWait(context.Background(), frame(1)); !errors.Is(err, ErrSlow) {
			t.Fatalf("pushWait after the overflow: %v", err)
		}
	})
	t.Run("a large frame into an empty queue", func(t *testing.T) {
		q := NewQueue(100, KindWS)
		if _, err := q.push(Item{Bytes: make([]byte, 500), End: true}); err != nil {
			t.Fatal(err)
		}
		if it, ok := q.Head(); !ok || len(it.Bytes) != 500 || !it.End {
			t.Fatalf("head %v %v", ok, len(it.Bytes))
		}
	})
	t.Run("pushWait waits for room", func(t *testing.T) {
		q := NewQueue(100, KindWS)
		if _, err := q.push(frame(80)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- q.pushWait(context.Background(), frame(30)) }()
		select {
		case err := <-done:
			t.Fatalf("pushWait returned %v with no room", err)
		case <-time.After(20 * time.Millisecond):
		}
		q.Pop()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("pushWait still waiting after a pop made room")
		}
		if it, ok := q.Head(); !ok || len(it.Bytes) != 30 {
			t.Fatalf("head after pushWait: %v", ok)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := q.push(frame(70)); err != nil { // full: 30 + 70
			t.Fatal(err)
		}
		if err := q.pushWait(ctx, frame(80)); !errors.Is(err, context.Canceled) {
			t.Fatalf("pushWait with a dead ctx: %v", err)
		}
	})
}
