-- Argo CD health of a boxauth.io AccessPolicy: read as kstatus reads it (operator/reasons.ts, README
-- "Conditions and reasons"), so Argo CD and Flux agree; but a resource the operator has not written
-- a status on yet is Progressing here (kstatus would call it Current). The same rules for every kind.
-- Argo CD runs this with gopher-lua (Lua 5.1): `obj` is the resource, the result a {status, message}.
local hs = { status = "Progressing", message = "Waiting for the boxauth operator" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and obj.status.observedGeneration ~= nil and obj.status.observedGeneration ~= generation then
  hs.message = "Waiting for the boxauth operator to reconcile generation " .. generation
  return hs
end
local found = {}
for _, condition in ipairs(obj.status.conditions) do
  found[condition.type] = condition
end
local function said(condition)
  return (condition.reason or "") .. ": " .. (condition.message or "")
end
if found.Stalled ~= nil and found.Stalled.status == "True" then
  return { status = "Degraded", message = said(found.Stalled) }
end
if found.Reconciling ~= nil and found.Reconciling.status == "True" then
  return { status = "Progressing", message = said(found.Reconciling) }
end
if found.Ready ~= nil and found.Ready.status == "True" then
  return { status = "Healthy", message = said(found.Ready) }
end
if found.Ready ~= nil then
  hs.message = said(found.Ready)
end
return hs
