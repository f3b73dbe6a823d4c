-- SPDX-License-Identifier: GPL-2.0
--
-- The demo's interpreted workload (make demo, rows "lua"): a Lua program
-- whose time goes to Lua functions, run by Debian's unmodified lua5.4.
-- With tools/unwind_user/lua's unwind_assist module the profile names
-- them; without it, the stacks end in the interpreter's loop.
--
-- Call graph (callee <- caller): fib <- fib | work; checksum <- work;
-- render <- work; work <- run; run <- the main chunk.

function fib(n)
	if n < 2 then
		return n
	end
	return fib(n - 1) + fib(n - 2)
end

function checksum(s)
	local h = 0
	for i = 1, #s do
		h = (h * 31 + s:byte(i)) % 4294967296
	end
	return h
end

function render(n)
	local t = {}
	for i = 1, n do
		t[#t + 1] = string.format("%d:%d", i, i * i)
	end
	return table.concat(t, ",")
end

function work()
	return checksum(render(100)) + fib(14)
end

function run(secs)
	local stop = os.clock() + secs
	local rounds = 0
	while os.clock() < stop do
		work()
		rounds = rounds + 1
	end
	return rounds
end

print(string.format("interp: %d rounds", run(tonumber(arg[1]) or 8)))
