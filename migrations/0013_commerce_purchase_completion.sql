ALTER TABLE `commerce_purchases` ADD `maker_event_id` integer;--> statement-breakpoint
ALTER TABLE `commerce_purchases` ADD `completed_at` text;--> statement-breakpoint
-- Purchases that made their order before this column existed made it whole (or were left for a person to finish).
UPDATE `commerce_purchases` SET `completed_at` = `updated_at` WHERE `order_id` IS NOT NULL;
