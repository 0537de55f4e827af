"""Models. Each keeps a leading seed axis on its parameters so several seeds train as
one."""
